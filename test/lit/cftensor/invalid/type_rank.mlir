// A !cftensor.t element whose shape and broadcast factor differ in rank: rejected by the type's parser, as one line error: file:line:col: ...
builtin.module {
  cftensor.rule "t" "Relu" {
    %x = cftensor.input "x" : !cftensor.t<R, [batch, curr], [1]>
    cftensor.return %x : !cftensor.t<R, [batch, curr], [1]>
  }
}

// RUN: cd %S && not cf-opt type_rank.mlir 2> %t.err
// RUN: filecheck %s --input-file %t.err
// CHECK-NOT: Traceback
// CHECK: {{^}}error: type_rank.mlir:4:64: shape and broadcast factor must have the same rank{{$}}
// CHECK-NOT: {{.}}
