module {
  func.func @repro(%arg0: !torch.vtensor<[768],f32>, %arg1: !torch.vtensor<[2,384],f32>) -> !torch.vtensor<[768],f32> {
    %int2 = torch.constant.int 2
    %int384 = torch.constant.int 384
    %0 = torch.prim.ListConstruct %int2, %int384 : (!torch.int, !torch.int) -> !torch.list<int>
    %int384_0 = torch.constant.int 384
    %int1 = torch.constant.int 1
    %1 = torch.prim.ListConstruct %int384_0, %int1 : (!torch.int, !torch.int) -> !torch.list<int>
    %int0 = torch.constant.int 0
    %2 = torch.aten.as_strided_scatter %arg0, %arg1, %0, %1, %int0 : !torch.vtensor<[768],f32>, !torch.vtensor<[2,384],f32>, !torch.list<int>, !torch.list<int>, !torch.int -> !torch.vtensor<[768],f32>
    return %2 : !torch.vtensor<[768],f32>
  }
}
