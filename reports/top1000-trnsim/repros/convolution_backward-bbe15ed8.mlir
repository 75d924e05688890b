module {
  func.func @repro(%arg0: !torch.vtensor<[2,288,16,16],f32>, %arg1: !torch.vtensor<[2,3,224,224],f32>, %arg2: !torch.vtensor<[288,3,14,14],f32>) -> (!torch.vtensor<[288,3,14,14],f32>, !torch.vtensor<[288],f32>) {
    %int288 = torch.constant.int 288
    %0 = torch.prim.ListConstruct %int288 : (!torch.int) -> !torch.list<int>
    %int14 = torch.constant.int 14
    %int14_0 = torch.constant.int 14
    %1 = torch.prim.ListConstruct %int14, %int14_0 : (!torch.int, !torch.int) -> !torch.list<int>
    %int0 = torch.constant.int 0
    %2 = torch.prim.ListConstruct %int0 : (!torch.int) -> !torch.list<int>
    %int1 = torch.constant.int 1
    %int1_1 = torch.constant.int 1
    %3 = torch.prim.ListConstruct %int1, %int1_1 : (!torch.int, !torch.int) -> !torch.list<int>
    %false = torch.constant.bool false
    %int0_2 = torch.constant.int 0
    %4 = torch.prim.ListConstruct %int0_2 : (!torch.int) -> !torch.list<int>
    %int1_3 = torch.constant.int 1
    %false_4 = torch.constant.bool false
    %true = torch.constant.bool true
    %true_5 = torch.constant.bool true
    %5 = torch.prim.ListConstruct %false_4, %true, %true_5 : (!torch.bool, !torch.bool, !torch.bool) -> !torch.list<bool>
    %result0, %result1, %result2 = torch.aten.convolution_backward %arg0, %arg1, %arg2, %0, %1, %2, %3, %false, %4, %int1_3, %5 : !torch.vtensor<[2,288,16,16],f32>, !torch.vtensor<[2,3,224,224],f32>, !torch.vtensor<[288,3,14,14],f32>, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.bool, !torch.list<int>, !torch.int, !torch.list<bool> -> !torch.none, !torch.vtensor<[288,3,14,14],f32>, !torch.vtensor<[288],f32>
    return %result1, %result2 : !torch.vtensor<[288,3,14,14],f32>, !torch.vtensor<[288],f32>
  }
}
