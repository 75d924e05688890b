module {
  func.func @repro(%arg0: !torch.vtensor<[224,64],bf16>, %arg1: !torch.vtensor<[64,64],bf16>, %arg2: !torch.vtensor<[4],si32>) -> !torch.vtensor<[4,224,64],bf16> {
    %none = torch.constant.none
    %none_0 = torch.constant.none
    %0 = torch.operator "torch.aten._grouped_mm"(%arg0, %arg1, %arg2, %none, %none_0) : (!torch.vtensor<[224,64],bf16>, !torch.vtensor<[64,64],bf16>, !torch.vtensor<[4],si32>, !torch.none, !torch.none) -> !torch.vtensor<[4,224,64],bf16> 
    return %0 : !torch.vtensor<[4,224,64],bf16>
  }
}
