module {
  func.func @repro(%arg0: !torch.vtensor<[2,64,16,16],f32>, %arg1: !torch.vtensor<[2,64,32,32],f32>, %arg2: !torch.vtensor<[2,64,16,16],si64>) -> !torch.vtensor<[2,64,32,32],f32> {
    %int3 = torch.constant.int 3
    %int3_0 = torch.constant.int 3
    %0 = torch.prim.ListConstruct %int3, %int3_0 : (!torch.int, !torch.int) -> !torch.list<int>
    %int2 = torch.constant.int 2
    %int2_1 = torch.constant.int 2
    %1 = torch.prim.ListConstruct %int2, %int2_1 : (!torch.int, !torch.int) -> !torch.list<int>
    %int1 = torch.constant.int 1
    %int1_2 = torch.constant.int 1
    %2 = torch.prim.ListConstruct %int1, %int1_2 : (!torch.int, !torch.int) -> !torch.list<int>
    %int1_3 = torch.constant.int 1
    %int1_4 = torch.constant.int 1
    %3 = torch.prim.ListConstruct %int1_3, %int1_4 : (!torch.int, !torch.int) -> !torch.list<int>
    %false = torch.constant.bool false
    %4 = torch.aten.max_pool2d_with_indices_backward %arg0, %arg1, %0, %1, %2, %3, %false, %arg2 : !torch.vtensor<[2,64,16,16],f32>, !torch.vtensor<[2,64,32,32],f32>, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.bool, !torch.vtensor<[2,64,16,16],si64> -> !torch.vtensor<[2,64,32,32],f32>
    return %4 : !torch.vtensor<[2,64,32,32],f32>
  }
}
