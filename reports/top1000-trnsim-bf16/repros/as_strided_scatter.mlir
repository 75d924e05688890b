module {
  func.func @repro(%arg0: !torch.vtensor<[256],bf16>, %arg1: !torch.vtensor<[2,128],bf16>) -> !torch.vtensor<[256],bf16> {
    %int2 = torch.constant.int 2
    %int128 = torch.constant.int 128
    %0 = torch.prim.ListConstruct %int2, %int128 : (!torch.int, !torch.int) -> !torch.list<int>
    %int128_0 = torch.constant.int 128
    %int1 = torch.constant.int 1
    %1 = torch.prim.ListConstruct %int128_0, %int1 : (!torch.int, !torch.int) -> !torch.list<int>
    %int0 = torch.constant.int 0
    %2 = torch.aten.as_strided_scatter %arg0, %arg1, %0, %1, %int0 : !torch.vtensor<[256],bf16>, !torch.vtensor<[2,128],bf16>, !torch.list<int>, !torch.list<int>, !torch.int -> !torch.vtensor<[256],bf16>
    return %2 : !torch.vtensor<[256],bf16>
  }
}
