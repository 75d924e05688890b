module {
  func.func @repro(%arg0: !torch.vtensor<[2,16,512],f32>, %arg1: !torch.vtensor<[131072,1],ui8>, %arg2: !torch.vtensor<[4096],f32>, %arg3: !torch.vtensor<[512],f32>) -> !torch.vtensor<[2,16,512],f32> {
    %int512 = torch.constant.int 512
    %int512_0 = torch.constant.int 512
    %0 = torch.prim.ListConstruct %int512, %int512_0 : (!torch.int, !torch.int) -> !torch.list<int>
    %int64 = torch.constant.int 64
    %str = torch.constant.str "nf4"
    %none = torch.constant.none
    %none_1 = torch.constant.none
    %none_2 = torch.constant.none
    %1 = torch.operator "torch.bitsandbytes.gemm_4bit"(%arg0, %arg1, %0, %arg2, %int64, %str, %arg3, %none, %none_1, %none_2) : (!torch.vtensor<[2,16,512],f32>, !torch.vtensor<[131072,1],ui8>, !torch.list<int>, !torch.vtensor<[4096],f32>, !torch.int, !torch.str, !torch.vtensor<[512],f32>, !torch.none, !torch.none, !torch.none) -> !torch.vtensor<[2,16,512],f32> 
    return %1 : !torch.vtensor<[2,16,512],f32>
  }
}
