module {
  func.func @repro(%arg0: !torch.vtensor<[2,48,256],f32>, %arg1: !torch.vtensor<[2,48,1],i1>) -> !torch.vtensor<[2,32,256],f32> {
    %int2 = torch.constant.int 2
    %int32 = torch.constant.int 32
    %int256 = torch.constant.int 256
    %0 = torch.prim.ListConstruct %int2, %int32, %int256 : (!torch.int, !torch.int, !torch.int) -> !torch.list<int>
    %1 = torch.operator "torch.aten.masked_scatter_backward"(%arg0, %arg1, %0) : (!torch.vtensor<[2,48,256],f32>, !torch.vtensor<[2,48,1],i1>, !torch.list<int>) -> !torch.vtensor<[2,32,256],f32> 
    return %1 : !torch.vtensor<[2,32,256],f32>
  }
}
