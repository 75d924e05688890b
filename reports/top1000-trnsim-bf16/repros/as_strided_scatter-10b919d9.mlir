module {
  func.func @repro(%arg0: !torch.vtensor<[262144],bf16>, %arg1: !torch.vtensor<[8,512,64],bf16>) -> !torch.vtensor<[262144],bf16> {
    %int8 = torch.constant.int 8
    %int512 = torch.constant.int 512
    %int64 = torch.constant.int 64
    %0 = torch.prim.ListConstruct %int8, %int512, %int64 : (!torch.int, !torch.int, !torch.int) -> !torch.list<int>
    %int64_0 = torch.constant.int 64
    %int512_1 = torch.constant.int 512
    %int1 = torch.constant.int 1
    %1 = torch.prim.ListConstruct %int64_0, %int512_1, %int1 : (!torch.int, !torch.int, !torch.int) -> !torch.list<int>
    %int0 = torch.constant.int 0
    %2 = torch.aten.as_strided_scatter %arg0, %arg1, %0, %1, %int0 : !torch.vtensor<[262144],bf16>, !torch.vtensor<[8,512,64],bf16>, !torch.list<int>, !torch.list<int>, !torch.int -> !torch.vtensor<[262144],bf16>
    return %2 : !torch.vtensor<[262144],bf16>
  }
}
