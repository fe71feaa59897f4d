// Masked_reduce of operands of different ranks: rejected by MaskedReduceOp.verify_, as one line error: file:line:col: ...
builtin.module {
  cftensor.rule "t" "Affine" {
    %c = cftensor.input "c" : !cftensor.t<R, [batch, curr, poly], [1, 1, 1]>
    %p = cftensor.input "p" : !cftensor.t<R, [batch, curr], [1, 1]>
    %m = cftensor.masked_reduce %c, %p[2] kind "min" : (!cftensor.t<R, [batch, curr, poly], [1, 1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    cftensor.return %m : !cftensor.t<R, [batch, curr], [1, 1]>
  }
}

// RUN: cd %S && not cf-opt masked_reduce_rank.mlir 2> %t.err
// RUN: filecheck %s --input-file %t.err
// CHECK-NOT: Traceback
// CHECK: {{^}}error: masked_reduce_rank.mlir:6:5: 'cftensor.masked_reduce' op operands must have the same rank{{$}}
// CHECK-NOT: {{.}}
