module {
  func.func @repro(%arg0: !torch.vtensor<[2,4,1,64],f32>, %arg1: !torch.vtensor<[2],si64>, %arg2: !torch.vtensor<[2],si64>, %arg3: !torch.vtensor<[2,4,64],f32>) -> !torch.vtensor<[2,4,1,64],f32> {
    %none = torch.constant.none
    %0 = torch.prim.ListConstruct %arg1, %none, %arg2 : (!torch.vtensor<[2],si64>, !torch.none, !torch.vtensor<[2],si64>) -> !torch.list<optional<vtensor>>
    %true = torch.constant.bool true
    %1 = torch.aten.index_put %arg0, %0, %arg3, %true : !torch.vtensor<[2,4,1,64],f32>, !torch.list<optional<vtensor>>, !torch.vtensor<[2,4,64],f32>, !torch.bool -> !torch.vtensor<[2,4,1,64],f32>
    return %1 : !torch.vtensor<[2,4,1,64],f32>
  }
}
