module {
  func.func @repro(%arg0: !torch.vtensor<[2,5120],f32>) -> !torch.vtensor<[2,17,1024],f32> {
    %int1 = torch.constant.int 1
    %int1024 = torch.constant.int 1024
    %int256 = torch.constant.int 256
    %0 = torch.aten.unfold %arg0, %int1, %int1024, %int256 : !torch.vtensor<[2,5120],f32>, !torch.int, !torch.int, !torch.int -> !torch.vtensor<[2,17,1024],f32>
    return %0 : !torch.vtensor<[2,17,1024],f32>
  }
}
