module {
  func.func @repro(%arg0: !torch.vtensor<[2,1,16],bf16>, %arg1: !torch.vtensor<[2,1,16],i1>, %arg2: !torch.vtensor<[0],bf16>) -> !torch.vtensor<[2,1,16],bf16> {
    %0 = torch.prim.ListConstruct %arg1 : (!torch.vtensor<[2,1,16],i1>) -> !torch.list<optional<vtensor>>
    %false = torch.constant.bool false
    %1 = torch.aten.index_put %arg0, %0, %arg2, %false : !torch.vtensor<[2,1,16],bf16>, !torch.list<optional<vtensor>>, !torch.vtensor<[0],bf16>, !torch.bool -> !torch.vtensor<[2,1,16],bf16>
    return %1 : !torch.vtensor<[2,1,16],bf16>
  }
}
