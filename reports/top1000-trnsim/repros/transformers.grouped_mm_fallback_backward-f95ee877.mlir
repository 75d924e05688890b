module {
  func.func @repro(%arg0: !torch.vtensor<[64,64],f32>, %arg1: !torch.vtensor<[4,64,224],f32>, %arg2: !torch.vtensor<[4],si32>, %arg3: !torch.vtensor<[64,224],f32>) -> (!torch.vtensor<[64,64],f32>, !torch.vtensor<[4,64,224],f32>) {
    %0:2 = torch.operator "torch.transformers.grouped_mm_fallback_backward"(%arg0, %arg1, %arg2, %arg3) : (!torch.vtensor<[64,64],f32>, !torch.vtensor<[4,64,224],f32>, !torch.vtensor<[4],si32>, !torch.vtensor<[64,224],f32>) -> (!torch.vtensor<[64,64],f32>, !torch.vtensor<[4,64,224],f32>) 
    return %0#0, %0#1 : !torch.vtensor<[64,64],f32>, !torch.vtensor<[4,64,224],f32>
  }
}
