// Masked_reduce by sum (only min and max have an identity to mask with): rejected by MaskedReduceOp.verify_, as one line error: file:line:col: ...
builtin.module {
  cftensor.rule "t" "Affine" {
    %c = cftensor.input "c" : !cftensor.t<R, [batch, curr, poly], [1, 1, 1]>
    %m = cftensor.masked_reduce %c, %c[2] kind "sum" : (!cftensor.t<R, [batch, curr, poly], [1, 1, 1]>, !cftensor.t<R, [batch, curr, poly], [1, 1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    cftensor.return %m : !cftensor.t<R, [batch, curr], [1, 1]>
  }
}

// RUN: cd %S && not cf-opt masked_reduce_kind.mlir 2> %t.err
// RUN: filecheck %s --input-file %t.err
// CHECK-NOT: Traceback
// CHECK: {{^}}error: masked_reduce_kind.mlir:5:5: 'cftensor.masked_reduce' op reduces by min or max, not 'sum'{{$}}
// CHECK-NOT: {{.}}
