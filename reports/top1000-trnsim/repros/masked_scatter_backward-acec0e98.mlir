module {
  func.func @repro(%arg0: !torch.vtensor<[2,80,512],f32>, %arg1: !torch.vtensor<[2,80,1],i1>) -> !torch.vtensor<[2,64,512],f32> {
    %int2 = torch.constant.int 2
    %int64 = torch.constant.int 64
    %int512 = torch.constant.int 512
    %0 = torch.prim.ListConstruct %int2, %int64, %int512 : (!torch.int, !torch.int, !torch.int) -> !torch.list<int>
    %1 = torch.operator "torch.aten.masked_scatter_backward"(%arg0, %arg1, %0) : (!torch.vtensor<[2,80,512],f32>, !torch.vtensor<[2,80,1],i1>, !torch.list<int>) -> !torch.vtensor<[2,64,512],f32> 
    return %1 : !torch.vtensor<[2,64,512],f32>
  }
}
