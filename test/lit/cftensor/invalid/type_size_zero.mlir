// A !cftensor.t size of 0: rejected by the type's parser, as one line file:line:col: error: ...
builtin.module {
  cftensor.rule "t" "Relu" {
    %x = cftensor.input "x" : !cftensor.t<R, [batch, 0], [1, 1]>
    cftensor.return %x : !cftensor.t<R, [batch, 0], [1, 1]>
  }
}

// RUN: cd %S && not cf-opt type_size_zero.mlir 2> %t.err
// RUN: filecheck %s --input-file %t.err
// CHECK-NOT: Traceback
// CHECK: {{^}}type_size_zero.mlir:4:55: error: sizes are positive integers or symbols{{$}}
// CHECK-NOT: {{.}}
