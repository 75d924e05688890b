module {
  func.func @repro(%arg0: !torch.vtensor<[704512,1],ui8>, %arg1: !torch.vtensor<[22016],f32>) -> !torch.vtensor<[512,2752],bf16> {
    %int64 = torch.constant.int 64
    %str = torch.constant.str "nf4"
    %int512 = torch.constant.int 512
    %int2752 = torch.constant.int 2752
    %0 = torch.prim.ListConstruct %int512, %int2752 : (!torch.int, !torch.int) -> !torch.list<int>
    %int15 = torch.constant.int 15
    %1 = torch.operator "torch.bitsandbytes.dequantize_4bit"(%arg0, %arg1, %int64, %str, %0, %int15) : (!torch.vtensor<[704512,1],ui8>, !torch.vtensor<[22016],f32>, !torch.int, !torch.str, !torch.list<int>, !torch.int) -> !torch.vtensor<[512,2752],bf16> 
    return %1 : !torch.vtensor<[512,2752],bf16>
  }
}
