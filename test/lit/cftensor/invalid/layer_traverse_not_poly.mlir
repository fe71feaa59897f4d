// Cftensor.layer_traverse over a Real tensor, not a PolyExp: rejected by LayerTraverseOp.verify_, as one line error: file:line:col: ...
builtin.module {
  cftensor.rule "t" "Affine" {
    %x = cftensor.input "x" : !cftensor.t<R, [batch, curr], [1, 1]>
    %r = cftensor.layer_traverse(%x) : (!cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]> priority {
    ^bb0(%n: !cftensor.t<N, [lay], [1] :: N, [1, 1], [batch, curr]>):
      %p = cftensor.const(0.000000e+00 : f64) : !cftensor.t<const I, [1], [1]>
      %s = cftensor.const(0.000000e+00 : f64) : !cftensor.t<const B, [1], [1]>
      cftensor.return %p, %s : !cftensor.t<const I, [1], [1]>, !cftensor.t<const B, [1], [1]>
    } body {
    ^bb1(%m: !cftensor.t<N, [lay], [1] :: N, [1, 1], [batch, curr]>, %k: !cftensor.t<R, [lay], [1] :: R, [batch, curr], [1, 1]>):
      cftensor.return %x : !cftensor.t<R, [batch, curr], [1, 1]>
    }
    cftensor.return %r : !cftensor.t<R, [batch, curr], [1, 1]>
  }
}

// RUN: cd %S && not cf-opt layer_traverse_not_poly.mlir 2> %t.err
// RUN: filecheck %s --input-file %t.err
// CHECK-NOT: Traceback
// CHECK: {{^}}error: layer_traverse_not_poly.mlir:5:5: 'cftensor.layer_traverse' op maps a PolyExp to a PolyExp of the same type{{$}}
// CHECK-NOT: {{.}}
