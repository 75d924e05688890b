module {
  func.func @repro(%arg0: !torch.vtensor<[2,32,56,56],bf16>, %arg1: !torch.vtensor<[2,64,28,28],bf16>, %arg2: !torch.vtensor<[64,32,2,2],bf16>) -> (!torch.vtensor<[2,64,28,28],bf16>, !torch.vtensor<[64,32,2,2],bf16>, !torch.vtensor<[32],bf16>) {
    %int32 = torch.constant.int 32
    %0 = torch.prim.ListConstruct %int32 : (!torch.int) -> !torch.list<int>
    %int2 = torch.constant.int 2
    %int2_0 = torch.constant.int 2
    %1 = torch.prim.ListConstruct %int2, %int2_0 : (!torch.int, !torch.int) -> !torch.list<int>
    %int0 = torch.constant.int 0
    %int0_1 = torch.constant.int 0
    %2 = torch.prim.ListConstruct %int0, %int0_1 : (!torch.int, !torch.int) -> !torch.list<int>
    %int1 = torch.constant.int 1
    %int1_2 = torch.constant.int 1
    %3 = torch.prim.ListConstruct %int1, %int1_2 : (!torch.int, !torch.int) -> !torch.list<int>
    %true = torch.constant.bool true
    %int0_3 = torch.constant.int 0
    %int0_4 = torch.constant.int 0
    %4 = torch.prim.ListConstruct %int0_3, %int0_4 : (!torch.int, !torch.int) -> !torch.list<int>
    %int1_5 = torch.constant.int 1
    %true_6 = torch.constant.bool true
    %true_7 = torch.constant.bool true
    %true_8 = torch.constant.bool true
    %5 = torch.prim.ListConstruct %true_6, %true_7, %true_8 : (!torch.bool, !torch.bool, !torch.bool) -> !torch.list<bool>
    %result0, %result1, %result2 = torch.aten.convolution_backward %arg0, %arg1, %arg2, %0, %1, %2, %3, %true, %4, %int1_5, %5 : !torch.vtensor<[2,32,56,56],bf16>, !torch.vtensor<[2,64,28,28],bf16>, !torch.vtensor<[64,32,2,2],bf16>, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.bool, !torch.list<int>, !torch.int, !torch.list<bool> -> !torch.vtensor<[2,64,28,28],bf16>, !torch.vtensor<[64,32,2,2],bf16>, !torch.vtensor<[32],bf16>
    return %result0, %result1, %result2 : !torch.vtensor<[2,64,28,28],bf16>, !torch.vtensor<[64,32,2,2],bf16>, !torch.vtensor<[32],bf16>
  }
}
