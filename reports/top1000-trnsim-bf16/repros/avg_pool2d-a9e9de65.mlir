module {
  func.func @repro(%arg0: !torch.vtensor<[2,2560,7,7],bf16>) -> !torch.vtensor<[2,2560,1,1],bf16> {
    %int2560 = torch.constant.int 2560
    %int2560_0 = torch.constant.int 2560
    %0 = torch.prim.ListConstruct %int2560, %int2560_0 : (!torch.int, !torch.int) -> !torch.list<int>
    %int2560_1 = torch.constant.int 2560
    %int2560_2 = torch.constant.int 2560
    %1 = torch.prim.ListConstruct %int2560_1, %int2560_2 : (!torch.int, !torch.int) -> !torch.list<int>
    %int0 = torch.constant.int 0
    %int0_3 = torch.constant.int 0
    %2 = torch.prim.ListConstruct %int0, %int0_3 : (!torch.int, !torch.int) -> !torch.list<int>
    %true = torch.constant.bool true
    %true_4 = torch.constant.bool true
    %none = torch.constant.none
    %3 = torch.aten.avg_pool2d %arg0, %0, %1, %2, %true, %true_4, %none : !torch.vtensor<[2,2560,7,7],bf16>, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.bool, !torch.bool, !torch.none -> !torch.vtensor<[2,2560,1,1],bf16>
    return %3 : !torch.vtensor<[2,2560,1,1],bf16>
  }
}
