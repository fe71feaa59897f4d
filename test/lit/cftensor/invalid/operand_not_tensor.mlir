// A cftensor op on a cf value, in generic form: rejected by the IRDL operand constraint, as one line error: file:line:col: ...
builtin.module {
  cf.func @f(%x: !cf.float) -> !cf.float {
    %y = "cftensor.unary"(%x) <{op = "neg"}> : (!cf.float) -> !cftensor.t<R, [batch], [1]>
    cf.yield %x : !cf.float
  }
}

// RUN: cd %S && not cf-opt operand_not_tensor.mlir 2> %t.err
// RUN: filecheck %s --input-file %t.err
// CHECK-NOT: Traceback
// CHECK: {{^}}error: operand_not_tensor.mlir:4:5: 'cftensor.unary' op operand 'input' at position 0 does not verify: !cf.float should be of base attribute cftensor.t{{$}}
// CHECK-NOT: {{.}}
