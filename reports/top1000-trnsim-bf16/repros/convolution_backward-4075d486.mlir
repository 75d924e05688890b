module {
  func.func @repro(%arg0: !torch.vtensor<[2,32,2,16,16],bf16>, %arg1: !torch.vtensor<[2,32,2,16,16],bf16>, %arg2: !torch.vtensor<[32,32,3,1,1],bf16>) -> (!torch.vtensor<[2,32,2,16,16],bf16>, !torch.vtensor<[32,32,3,1,1],bf16>, !torch.vtensor<[32],bf16>) {
    %int32 = torch.constant.int 32
    %0 = torch.prim.ListConstruct %int32 : (!torch.int) -> !torch.list<int>
    %int1 = torch.constant.int 1
    %int1_0 = torch.constant.int 1
    %int1_1 = torch.constant.int 1
    %1 = torch.prim.ListConstruct %int1, %int1_0, %int1_1 : (!torch.int, !torch.int, !torch.int) -> !torch.list<int>
    %int1_2 = torch.constant.int 1
    %int0 = torch.constant.int 0
    %int0_3 = torch.constant.int 0
    %2 = torch.prim.ListConstruct %int1_2, %int0, %int0_3 : (!torch.int, !torch.int, !torch.int) -> !torch.list<int>
    %int1_4 = torch.constant.int 1
    %int1_5 = torch.constant.int 1
    %int1_6 = torch.constant.int 1
    %3 = torch.prim.ListConstruct %int1_4, %int1_5, %int1_6 : (!torch.int, !torch.int, !torch.int) -> !torch.list<int>
    %false = torch.constant.bool false
    %int0_7 = torch.constant.int 0
    %int0_8 = torch.constant.int 0
    %int0_9 = torch.constant.int 0
    %4 = torch.prim.ListConstruct %int0_7, %int0_8, %int0_9 : (!torch.int, !torch.int, !torch.int) -> !torch.list<int>
    %int1_10 = torch.constant.int 1
    %true = torch.constant.bool true
    %true_11 = torch.constant.bool true
    %true_12 = torch.constant.bool true
    %5 = torch.prim.ListConstruct %true, %true_11, %true_12 : (!torch.bool, !torch.bool, !torch.bool) -> !torch.list<bool>
    %result0, %result1, %result2 = torch.aten.convolution_backward %arg0, %arg1, %arg2, %0, %1, %2, %3, %false, %4, %int1_10, %5 : !torch.vtensor<[2,32,2,16,16],bf16>, !torch.vtensor<[2,32,2,16,16],bf16>, !torch.vtensor<[32,32,3,1,1],bf16>, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.bool, !torch.list<int>, !torch.int, !torch.list<bool> -> !torch.vtensor<[2,32,2,16,16],bf16>, !torch.vtensor<[32,32,3,1,1],bf16>, !torch.vtensor<[32],bf16>
    return %result0, %result1, %result2 : !torch.vtensor<[2,32,2,16,16],bf16>, !torch.vtensor<[32,32,3,1,1],bf16>, !torch.vtensor<[32],bf16>
  }
}
