module {
  func.func @repro(%arg0: !torch.vtensor<[2,17,1024],complex<f32>>) -> !torch.vtensor<[2,17,1024],complex<f32>> {
    %int2 = torch.constant.int 2
    %0 = torch.prim.ListConstruct %int2 : (!torch.int) -> !torch.list<int>
    %int0 = torch.constant.int 0
    %false = torch.constant.bool false
    %1 = torch.operator "torch.aten._fft_c2c"(%arg0, %0, %int0, %false) : (!torch.vtensor<[2,17,1024],complex<f32>>, !torch.list<int>, !torch.int, !torch.bool) -> !torch.vtensor<[2,17,1024],complex<f32>> 
    return %1 : !torch.vtensor<[2,17,1024],complex<f32>>
  }
}
