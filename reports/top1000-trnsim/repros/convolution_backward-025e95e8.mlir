module {
  func.func @repro(%arg0: !torch.vtensor<[2,512,8,8],f32>, %arg1: !torch.vtensor<[2,512,16,16],f32>, %arg2: !torch.vtensor<[512,1,3,3],f32>) -> (!torch.vtensor<[2,512,16,16],f32>, !torch.vtensor<[512,1,3,3],f32>) {
    %int0 = torch.constant.int 0
    %0 = torch.prim.ListConstruct %int0 : (!torch.int) -> !torch.list<int>
    %int2 = torch.constant.int 2
    %int2_0 = torch.constant.int 2
    %1 = torch.prim.ListConstruct %int2, %int2_0 : (!torch.int, !torch.int) -> !torch.list<int>
    %int1 = torch.constant.int 1
    %int1_1 = torch.constant.int 1
    %2 = torch.prim.ListConstruct %int1, %int1_1 : (!torch.int, !torch.int) -> !torch.list<int>
    %int1_2 = torch.constant.int 1
    %int1_3 = torch.constant.int 1
    %3 = torch.prim.ListConstruct %int1_2, %int1_3 : (!torch.int, !torch.int) -> !torch.list<int>
    %false = torch.constant.bool false
    %int0_4 = torch.constant.int 0
    %int0_5 = torch.constant.int 0
    %4 = torch.prim.ListConstruct %int0_4, %int0_5 : (!torch.int, !torch.int) -> !torch.list<int>
    %int512 = torch.constant.int 512
    %true = torch.constant.bool true
    %true_6 = torch.constant.bool true
    %false_7 = torch.constant.bool false
    %5 = torch.prim.ListConstruct %true, %true_6, %false_7 : (!torch.bool, !torch.bool, !torch.bool) -> !torch.list<bool>
    %result0, %result1, %result2 = torch.aten.convolution_backward %arg0, %arg1, %arg2, %0, %1, %2, %3, %false, %4, %int512, %5 : !torch.vtensor<[2,512,8,8],f32>, !torch.vtensor<[2,512,16,16],f32>, !torch.vtensor<[512,1,3,3],f32>, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.bool, !torch.list<int>, !torch.int, !torch.list<bool> -> !torch.vtensor<[2,512,16,16],f32>, !torch.vtensor<[512,1,3,3],f32>, !torch.none
    return %result0, %result1 : !torch.vtensor<[2,512,16,16],f32>, !torch.vtensor<[512,1,3,3],f32>
  }
}
