module {
  func.func @repro(%arg0: !torch.vtensor<[512,3,2,14,14],f32>, %arg1: !torch.vtensor<[32,3,2,14,14],f32>, %arg2: !torch.vtensor<[32,512],f32>) -> !torch.vtensor<[512,3,2,14,14],f32> {
    %int32 = torch.constant.int 32
    %int512 = torch.constant.int 512
    %int1 = torch.constant.int 1
    %int1_0 = torch.constant.int 1
    %int1_1 = torch.constant.int 1
    %0 = torch.prim.ListConstruct %int32, %int512, %int1, %int1_0, %int1_1 : (!torch.int, !torch.int, !torch.int, !torch.int, !torch.int) -> !torch.list<int>
    %1 = torch.aten.view %arg2, %0 : !torch.vtensor<[32,512],f32>, !torch.list<int> -> !torch.vtensor<[32,512,1,1,1],f32>
    %int0 = torch.constant.int 0
    %2 = torch.prim.ListConstruct %int0 : (!torch.int) -> !torch.list<int>
    %int2 = torch.constant.int 2
    %int14 = torch.constant.int 14
    %int14_2 = torch.constant.int 14
    %3 = torch.prim.ListConstruct %int2, %int14, %int14_2 : (!torch.int, !torch.int, !torch.int) -> !torch.list<int>
    %int0_3 = torch.constant.int 0
    %int0_4 = torch.constant.int 0
    %int0_5 = torch.constant.int 0
    %4 = torch.prim.ListConstruct %int0_3, %int0_4, %int0_5 : (!torch.int, !torch.int, !torch.int) -> !torch.list<int>
    %int1_6 = torch.constant.int 1
    %int1_7 = torch.constant.int 1
    %int1_8 = torch.constant.int 1
    %5 = torch.prim.ListConstruct %int1_6, %int1_7, %int1_8 : (!torch.int, !torch.int, !torch.int) -> !torch.list<int>
    %false = torch.constant.bool false
    %int0_9 = torch.constant.int 0
    %int0_10 = torch.constant.int 0
    %int0_11 = torch.constant.int 0
    %6 = torch.prim.ListConstruct %int0_9, %int0_10, %int0_11 : (!torch.int, !torch.int, !torch.int) -> !torch.list<int>
    %int1_12 = torch.constant.int 1
    %false_13 = torch.constant.bool false
    %true = torch.constant.bool true
    %false_14 = torch.constant.bool false
    %7 = torch.prim.ListConstruct %false_13, %true, %false_14 : (!torch.bool, !torch.bool, !torch.bool) -> !torch.list<bool>
    %result0, %result1, %result2 = torch.aten.convolution_backward %1, %arg1, %arg0, %2, %3, %4, %5, %false, %6, %int1_12, %7 : !torch.vtensor<[32,512,1,1,1],f32>, !torch.vtensor<[32,3,2,14,14],f32>, !torch.vtensor<[512,3,2,14,14],f32>, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.bool, !torch.list<int>, !torch.int, !torch.list<bool> -> !torch.none, !torch.vtensor<[512,3,2,14,14],f32>, !torch.none
    return %result1 : !torch.vtensor<[512,3,2,14,14],f32>
  }
}
