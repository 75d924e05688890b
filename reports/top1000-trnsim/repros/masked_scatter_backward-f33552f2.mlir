module {
  func.func @repro(%arg0: !torch.vtensor<[2,66,256],f32>, %arg1: !torch.vtensor<[2,66,1],i1>) -> !torch.vtensor<[2,50,256],f32> {
    %int2 = torch.constant.int 2
    %int50 = torch.constant.int 50
    %int256 = torch.constant.int 256
    %0 = torch.prim.ListConstruct %int2, %int50, %int256 : (!torch.int, !torch.int, !torch.int) -> !torch.list<int>
    %1 = torch.operator "torch.aten.masked_scatter_backward"(%arg0, %arg1, %0) : (!torch.vtensor<[2,66,256],f32>, !torch.vtensor<[2,66,1],i1>, !torch.list<int>) -> !torch.vtensor<[2,50,256],f32> 
    return %1 : !torch.vtensor<[2,50,256],f32>
  }
}
