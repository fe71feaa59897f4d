// A reduction over a dimension the operand does not have: rejected by the dimension check of the dim ops, as one line error: file:line:col: ...
builtin.module {
  cftensor.rule "t" "Affine" {
    %c = cftensor.input "c" : !cftensor.t<R, [batch, curr, poly], [1, 1, 1]>
    %r = cftensor.reduce %c[3] kind "sum" : (!cftensor.t<R, [batch, curr, poly], [1, 1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    cftensor.return %r : !cftensor.t<R, [batch, curr], [1, 1]>
  }
}

// RUN: cd %S && not cf-opt reduce_dim.mlir 2> %t.err
// RUN: filecheck %s --input-file %t.err
// CHECK-NOT: Traceback
// CHECK: {{^}}error: reduce_dim.mlir:5:5: 'cftensor.reduce' op dimension 3 is out of range for rank 3{{$}}
// CHECK-NOT: {{.}}
