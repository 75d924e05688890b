module {
  func.func @repro(%arg0: !torch.vtensor<[2,256,8,14,14],bf16>, %arg1: !torch.vtensor<[2,3,16,224,224],bf16>, %arg2: !torch.vtensor<[256,3,2,16,16],bf16>) -> (!torch.vtensor<[256,3,2,16,16],bf16>, !torch.vtensor<[256],bf16>) {
    %int256 = torch.constant.int 256
    %0 = torch.prim.ListConstruct %int256 : (!torch.int) -> !torch.list<int>
    %int2 = torch.constant.int 2
    %int16 = torch.constant.int 16
    %int16_0 = torch.constant.int 16
    %1 = torch.prim.ListConstruct %int2, %int16, %int16_0 : (!torch.int, !torch.int, !torch.int) -> !torch.list<int>
    %int0 = torch.constant.int 0
    %int0_1 = torch.constant.int 0
    %int0_2 = torch.constant.int 0
    %2 = torch.prim.ListConstruct %int0, %int0_1, %int0_2 : (!torch.int, !torch.int, !torch.int) -> !torch.list<int>
    %int1 = torch.constant.int 1
    %int1_3 = torch.constant.int 1
    %int1_4 = torch.constant.int 1
    %3 = torch.prim.ListConstruct %int1, %int1_3, %int1_4 : (!torch.int, !torch.int, !torch.int) -> !torch.list<int>
    %false = torch.constant.bool false
    %int0_5 = torch.constant.int 0
    %int0_6 = torch.constant.int 0
    %int0_7 = torch.constant.int 0
    %4 = torch.prim.ListConstruct %int0_5, %int0_6, %int0_7 : (!torch.int, !torch.int, !torch.int) -> !torch.list<int>
    %int1_8 = torch.constant.int 1
    %false_9 = torch.constant.bool false
    %true = torch.constant.bool true
    %true_10 = torch.constant.bool true
    %5 = torch.prim.ListConstruct %false_9, %true, %true_10 : (!torch.bool, !torch.bool, !torch.bool) -> !torch.list<bool>
    %result0, %result1, %result2 = torch.aten.convolution_backward %arg0, %arg1, %arg2, %0, %1, %2, %3, %false, %4, %int1_8, %5 : !torch.vtensor<[2,256,8,14,14],bf16>, !torch.vtensor<[2,3,16,224,224],bf16>, !torch.vtensor<[256,3,2,16,16],bf16>, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.bool, !torch.list<int>, !torch.int, !torch.list<bool> -> !torch.none, !torch.vtensor<[256,3,2,16,16],bf16>, !torch.vtensor<[256],bf16>
    return %result1, %result2 : !torch.vtensor<[256,3,2,16,16],bf16>, !torch.vtensor<[256],bf16>
  }
}
