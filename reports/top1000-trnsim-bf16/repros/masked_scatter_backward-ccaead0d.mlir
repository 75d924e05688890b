module {
  func.func @repro(%arg0: !torch.vtensor<[2,20,512],bf16>, %arg1: !torch.vtensor<[2,20,1],i1>) -> !torch.vtensor<[8,512],bf16> {
    %int8 = torch.constant.int 8
    %int512 = torch.constant.int 512
    %0 = torch.prim.ListConstruct %int8, %int512 : (!torch.int, !torch.int) -> !torch.list<int>
    %1 = torch.operator "torch.aten.masked_scatter_backward"(%arg0, %arg1, %0) : (!torch.vtensor<[2,20,512],bf16>, !torch.vtensor<[2,20,1],i1>, !torch.list<int>) -> !torch.vtensor<[8,512],bf16> 
    return %1 : !torch.vtensor<[8,512],bf16>
  }
}
