module {
  func.func @repro(%arg0: !torch.vtensor<[32,512,1,1,1],bf16>, %arg1: !torch.vtensor<[32,3,2,14,14],bf16>, %arg2: !torch.vtensor<[512,3,2,14,14],bf16>) -> !torch.vtensor<[512,3,2,14,14],bf16> {
    %int0 = torch.constant.int 0
    %0 = torch.prim.ListConstruct %int0 : (!torch.int) -> !torch.list<int>
    %int2 = torch.constant.int 2
    %int14 = torch.constant.int 14
    %int14_0 = torch.constant.int 14
    %1 = torch.prim.ListConstruct %int2, %int14, %int14_0 : (!torch.int, !torch.int, !torch.int) -> !torch.list<int>
    %int0_1 = torch.constant.int 0
    %int0_2 = torch.constant.int 0
    %int0_3 = torch.constant.int 0
    %2 = torch.prim.ListConstruct %int0_1, %int0_2, %int0_3 : (!torch.int, !torch.int, !torch.int) -> !torch.list<int>
    %int1 = torch.constant.int 1
    %int1_4 = torch.constant.int 1
    %int1_5 = torch.constant.int 1
    %3 = torch.prim.ListConstruct %int1, %int1_4, %int1_5 : (!torch.int, !torch.int, !torch.int) -> !torch.list<int>
    %false = torch.constant.bool false
    %int0_6 = torch.constant.int 0
    %int0_7 = torch.constant.int 0
    %int0_8 = torch.constant.int 0
    %4 = torch.prim.ListConstruct %int0_6, %int0_7, %int0_8 : (!torch.int, !torch.int, !torch.int) -> !torch.list<int>
    %int1_9 = torch.constant.int 1
    %false_10 = torch.constant.bool false
    %true = torch.constant.bool true
    %false_11 = torch.constant.bool false
    %5 = torch.prim.ListConstruct %false_10, %true, %false_11 : (!torch.bool, !torch.bool, !torch.bool) -> !torch.list<bool>
    %result0, %result1, %result2 = torch.aten.convolution_backward %arg0, %arg1, %arg2, %0, %1, %2, %3, %false, %4, %int1_9, %5 : !torch.vtensor<[32,512,1,1,1],bf16>, !torch.vtensor<[32,3,2,14,14],bf16>, !torch.vtensor<[512,3,2,14,14],bf16>, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.bool, !torch.list<int>, !torch.int, !torch.list<bool> -> !torch.none, !torch.vtensor<[512,3,2,14,14],bf16>, !torch.none
    return %result1 : !torch.vtensor<[512,3,2,14,14],bf16>
  }
}
