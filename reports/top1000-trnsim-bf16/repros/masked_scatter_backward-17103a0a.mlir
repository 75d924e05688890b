module {
  func.func @repro(%arg0: !torch.vtensor<[2,544,512],bf16>, %arg1: !torch.vtensor<[2,544,1],i1>) -> !torch.vtensor<[1056,512],bf16> {
    %int1056 = torch.constant.int 1056
    %int512 = torch.constant.int 512
    %0 = torch.prim.ListConstruct %int1056, %int512 : (!torch.int, !torch.int) -> !torch.list<int>
    %1 = torch.operator "torch.aten.masked_scatter_backward"(%arg0, %arg1, %0) : (!torch.vtensor<[2,544,512],bf16>, !torch.vtensor<[2,544,1],i1>, !torch.list<int>) -> !torch.vtensor<[1056,512],bf16> 
    return %1 : !torch.vtensor<[1056,512],bf16>
  }
}
