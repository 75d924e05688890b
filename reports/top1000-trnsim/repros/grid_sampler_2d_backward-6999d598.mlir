module {
  func.func @repro(%arg0: !torch.vtensor<[16,32,1029,4],f32>, %arg1: !torch.vtensor<[16,32,28,28],f32>, %arg2: !torch.vtensor<[16,1029,4,2],f32>) -> (!torch.vtensor<[16,32,28,28],f32>, !torch.vtensor<[16,1029,4,2],f32>) {
    %int0 = torch.constant.int 0
    %int0_0 = torch.constant.int 0
    %false = torch.constant.bool false
    %true = torch.constant.bool true
    %true_1 = torch.constant.bool true
    %0 = torch.prim.ListConstruct %true, %true_1 : (!torch.bool, !torch.bool) -> !torch.list<bool>
    %1:2 = torch.operator "torch.aten.grid_sampler_2d_backward"(%arg0, %arg1, %arg2, %int0, %int0_0, %false, %0) : (!torch.vtensor<[16,32,1029,4],f32>, !torch.vtensor<[16,32,28,28],f32>, !torch.vtensor<[16,1029,4,2],f32>, !torch.int, !torch.int, !torch.bool, !torch.list<bool>) -> (!torch.vtensor<[16,32,28,28],f32>, !torch.vtensor<[16,1029,4,2],f32>) 
    return %1#0, %1#1 : !torch.vtensor<[16,32,28,28],f32>, !torch.vtensor<[16,1029,4,2],f32>
  }
}
