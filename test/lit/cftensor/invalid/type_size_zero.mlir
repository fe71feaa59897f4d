// A !cftensor.t size of 0: rejected by the type's parser, as one line error: file:line:col: ...
builtin.module {
  cftensor.rule "t" "Relu" {
    %x = cftensor.input "x" : !cftensor.t<R, [batch, 0], [1, 1]>
    cftensor.return %x : !cftensor.t<R, [batch, 0], [1, 1]>
  }
}

// RUN: cd %S && not cf-opt type_size_zero.mlir 2> %t.err
// RUN: filecheck %s --input-file %t.err
// CHECK-NOT: Traceback
// CHECK: {{^}}error: type_size_zero.mlir:4:55: sizes are positive integers or symbols{{$}}
// CHECK-NOT: {{.}}
