module {
  func.func @repro(%arg0: !torch.vtensor<[2,17,513],complex<f32>>) -> !torch.vtensor<[2,17,1024],f32> {
    %int2 = torch.constant.int 2
    %0 = torch.prim.ListConstruct %int2 : (!torch.int) -> !torch.list<int>
    %int2_0 = torch.constant.int 2
    %int1024 = torch.constant.int 1024
    %1 = torch.operator "torch.aten._fft_c2r"(%arg0, %0, %int2_0, %int1024) : (!torch.vtensor<[2,17,513],complex<f32>>, !torch.list<int>, !torch.int, !torch.int) -> !torch.vtensor<[2,17,1024],f32> 
    return %1 : !torch.vtensor<[2,17,1024],f32>
  }
}
