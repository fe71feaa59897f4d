// A reduction by a kind that is not sum, min or max: rejected by ReduceOp.verify_, as one line error: file:line:col: ...
builtin.module {
  cftensor.rule "t" "Affine" {
    %c = cftensor.input "c" : !cftensor.t<R, [batch, curr, poly], [1, 1, 1]>
    %r = cftensor.reduce %c[2] kind "prod" : (!cftensor.t<R, [batch, curr, poly], [1, 1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    cftensor.return %r : !cftensor.t<R, [batch, curr], [1, 1]>
  }
}

// RUN: cd %S && not cf-opt reduce_kind.mlir 2> %t.err
// RUN: filecheck %s --input-file %t.err
// CHECK-NOT: Traceback
// CHECK: {{^}}error: reduce_kind.mlir:5:5: 'cftensor.reduce' op reduces by sum, min or max, not 'prod'{{$}}
// CHECK-NOT: {{.}}
