// A reduction spelling its kind with the old keyword `size`: rejected by the parser, which expects `kind`, as one line error: file:line:col: ...
builtin.module {
  cftensor.rule "t" "Affine" {
    %c = cftensor.input "c" : !cftensor.t<R, [batch, curr, poly], [1, 1, 1]>
    %r = cftensor.reduce %c[2] size "sum" : (!cftensor.t<R, [batch, curr, poly], [1, 1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    cftensor.return %r : !cftensor.t<R, [batch, curr], [1, 1]>
  }
}

// RUN: cd %S && not cf-opt reduce_size_keyword.mlir 2> %t.err
// RUN: filecheck %s --input-file %t.err
// CHECK-NOT: Traceback
// CHECK: {{^}}error: reduce_size_keyword.mlir:5:32: Expected 'kind'{{$}}
// CHECK-NOT: {{.}}
