module {
  func.func @repro() -> !torch.vtensor<[400],f32> {
    %int400 = torch.constant.int 400
    %false = torch.constant.bool false
    %float5.400000e-01 = torch.constant.float 5.400000e-01
    %float4.600000e-01 = torch.constant.float 4.600000e-01
    %int6 = torch.constant.int 6
    %none = torch.constant.none
    %none_0 = torch.constant.none
    %none_1 = torch.constant.none
    %0 = torch.operator "torch.aten.hamming_window.periodic_alpha_beta"(%int400, %false, %float5.400000e-01, %float4.600000e-01, %int6, %none, %none_0, %none_1) : (!torch.int, !torch.bool, !torch.float, !torch.float, !torch.int, !torch.none, !torch.none, !torch.none) -> !torch.vtensor<[400],f32> 
    return %0 : !torch.vtensor<[400],f32>
  }
}
