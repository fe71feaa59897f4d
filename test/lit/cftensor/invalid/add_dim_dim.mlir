// An add_dim past the position after the operand's last dimension (rank 2: dim 2 is fine, 3 is not): rejected by the dimension check of the dim ops, as one line error: file:line:col: ...
builtin.module {
  cftensor.rule "t" "Affine" {
    %x = cftensor.input "x" : !cftensor.t<R, [batch, curr], [1, 1]>
    %ok = cftensor.add_dim %x[2] : (!cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr, 1], [1, 1, poly]>
    %y = cftensor.add_dim %x[3] : (!cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr, 1], [1, 1, poly]>
    cftensor.return %y : !cftensor.t<R, [batch, curr, 1], [1, 1, poly]>
  }
}

// RUN: cd %S && not cf-opt add_dim_dim.mlir 2> %t.err
// RUN: filecheck %s --input-file %t.err
// CHECK-NOT: Traceback
// CHECK: {{^}}error: add_dim_dim.mlir:6:5: 'cftensor.add_dim' op dimension 3 is out of range for rank 2{{$}}
// CHECK-NOT: {{.}}
