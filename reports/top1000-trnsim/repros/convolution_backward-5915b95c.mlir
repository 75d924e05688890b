module {
  func.func @repro(%arg0: !torch.vtensor<[2,1024,7,7],f32>, %arg1: !torch.vtensor<[2,1024,7,7],f32>, %arg2: !torch.vtensor<[1024,1,3,3],f32>) -> (!torch.vtensor<[2,1024,7,7],f32>, !torch.vtensor<[1024,1,3,3],f32>, !torch.vtensor<[1024],f32>) {
    %int1024 = torch.constant.int 1024
    %0 = torch.prim.ListConstruct %int1024 : (!torch.int) -> !torch.list<int>
    %int1 = torch.constant.int 1
    %int1_0 = torch.constant.int 1
    %1 = torch.prim.ListConstruct %int1, %int1_0 : (!torch.int, !torch.int) -> !torch.list<int>
    %int1_1 = torch.constant.int 1
    %int1_2 = torch.constant.int 1
    %2 = torch.prim.ListConstruct %int1_1, %int1_2 : (!torch.int, !torch.int) -> !torch.list<int>
    %int1_3 = torch.constant.int 1
    %int1_4 = torch.constant.int 1
    %3 = torch.prim.ListConstruct %int1_3, %int1_4 : (!torch.int, !torch.int) -> !torch.list<int>
    %false = torch.constant.bool false
    %int0 = torch.constant.int 0
    %int0_5 = torch.constant.int 0
    %4 = torch.prim.ListConstruct %int0, %int0_5 : (!torch.int, !torch.int) -> !torch.list<int>
    %int1024_6 = torch.constant.int 1024
    %true = torch.constant.bool true
    %true_7 = torch.constant.bool true
    %true_8 = torch.constant.bool true
    %5 = torch.prim.ListConstruct %true, %true_7, %true_8 : (!torch.bool, !torch.bool, !torch.bool) -> !torch.list<bool>
    %result0, %result1, %result2 = torch.aten.convolution_backward %arg0, %arg1, %arg2, %0, %1, %2, %3, %false, %4, %int1024_6, %5 : !torch.vtensor<[2,1024,7,7],f32>, !torch.vtensor<[2,1024,7,7],f32>, !torch.vtensor<[1024,1,3,3],f32>, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.bool, !torch.list<int>, !torch.int, !torch.list<bool> -> !torch.vtensor<[2,1024,7,7],f32>, !torch.vtensor<[1024,1,3,3],f32>, !torch.vtensor<[1024],f32>
    return %result0, %result1, %result2 : !torch.vtensor<[2,1024,7,7],f32>, !torch.vtensor<[1024,1,3,3],f32>, !torch.vtensor<[1024],f32>
  }
}
