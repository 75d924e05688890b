module {
  func.func @repro(%arg0: !torch.vtensor<[2,60,1,115],f32>, %arg1: !torch.vtensor<[2,60,1,347],f32>, %arg2: !torch.vtensor<[2,60,1,115],si64>) -> !torch.vtensor<[2,60,1,347],f32> {
    %int1 = torch.constant.int 1
    %int3 = torch.constant.int 3
    %0 = torch.prim.ListConstruct %int1, %int3 : (!torch.int, !torch.int) -> !torch.list<int>
    %int1_0 = torch.constant.int 1
    %int3_1 = torch.constant.int 3
    %1 = torch.prim.ListConstruct %int1_0, %int3_1 : (!torch.int, !torch.int) -> !torch.list<int>
    %int0 = torch.constant.int 0
    %int0_2 = torch.constant.int 0
    %2 = torch.prim.ListConstruct %int0, %int0_2 : (!torch.int, !torch.int) -> !torch.list<int>
    %int1_3 = torch.constant.int 1
    %int1_4 = torch.constant.int 1
    %3 = torch.prim.ListConstruct %int1_3, %int1_4 : (!torch.int, !torch.int) -> !torch.list<int>
    %false = torch.constant.bool false
    %4 = torch.aten.max_pool2d_with_indices_backward %arg0, %arg1, %0, %1, %2, %3, %false, %arg2 : !torch.vtensor<[2,60,1,115],f32>, !torch.vtensor<[2,60,1,347],f32>, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.bool, !torch.vtensor<[2,60,1,115],si64> -> !torch.vtensor<[2,60,1,347],f32>
    return %4 : !torch.vtensor<[2,60,1,347],f32>
  }
}
