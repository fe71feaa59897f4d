// Every cf op and type, hand-written: print -> parse -> print is the identity (diff), the printed
// form is the expected one (CHECK), and the generic form parses back to the same module.
// RUN: cf-opt %s | filecheck %s
// RUN: cf-opt %s > %t.first.mlir && cf-opt %t.first.mlir > %t.second.mlir && diff %t.first.mlir %t.second.mlir
// RUN: cf-opt %s --print-op-generic | cf-opt > %t.generic.mlir && diff %t.first.mlir %t.generic.mlir
// RUN: cf-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

builtin.module {
  cf.shape (l : !cf.float, u : !cf.float, L : !cf.polyexp, Z : !cf.symexp) constraints(%curr: !cf.neuron) {
    %0 = cf.access %curr["l"] : (!cf.neuron) -> !cf.float
    %1 = cf.le %0, %curr : (!cf.float, !cf.neuron) -> !cf.ct
    %2 = cf.access %curr["Z"] : (!cf.neuron) -> !cf.symexp
    %3 = cf.in %curr, %2 : (!cf.neuron, !cf.symexp) -> !cf.ct
    cf.yield %1, %3 : !cf.ct, !cf.ct
  }
  cf.func @consts() -> !cf.float {
    %i = cf.const -3 : !cf.int
    %f = cf.const -2.5 : !cf.float
    %tiny = cf.const 1.0e-06 : !cf.float
    %b = cf.const false : !cf.bool
    %w = cf.const 7 : !cf.float
    %s = cf.sym
    %0 = cf.add %i, %f : (!cf.int, !cf.float) -> !cf.float
    %1 = cf.sub %0, %tiny : (!cf.float, !cf.float) -> !cf.float
    %2 = cf.mul %1, %w : (!cf.float, !cf.float) -> !cf.float
    %3 = cf.div %2, %i : (!cf.float, !cf.int) -> !cf.float
    %4 = cf.neg %i : (!cf.int) -> !cf.int
    %5 = cf.not %b : (!cf.bool) -> !cf.bool
    %6 = cf.lt %3, %4 : (!cf.float, !cf.int) -> !cf.bool
    %7 = cf.gt %3, %4 : (!cf.float, !cf.int) -> !cf.bool
    %8 = cf.ge %3, %4 : (!cf.float, !cf.int) -> !cf.bool
    %9 = cf.eq %5, %6 : (!cf.bool, !cf.bool) -> !cf.bool
    %10 = cf.ne %7, %8 : (!cf.bool, !cf.bool) -> !cf.bool
    %11 = cf.and %9, %10 : (!cf.bool, !cf.bool) -> !cf.bool
    %12 = cf.or %11, %5 : (!cf.bool, !cf.bool) -> !cf.bool
    %13 = cf.select %12, %3, %i : (!cf.bool, !cf.float, !cf.int) -> !cf.float
    %14 = cf.mul %s, %13 : (!cf.noise, !cf.float) -> !cf.symexp
    cf.yield %13 : !cf.float
  }
  cf.func @scalar(%x: !cf.float) -> !cf.float {
    %0 = cf.sigmoid %x : (!cf.float) -> !cf.float
    %1 = cf.tanh %0 : (!cf.float) -> !cf.float
    %2 = cf.exp %1 : (!cf.float) -> !cf.float
    %3 = cf.abs %2 : (!cf.float) -> !cf.float
    %4 = cf.max %3, %x : (!cf.float, !cf.float) -> !cf.float
    %5 = cf.min %4, %x : (!cf.float, !cf.float) -> !cf.float
    cf.yield %5 : !cf.float
  }
  cf.func @coeff(%n: !cf.neuron, %c: !cf.float) -> !cf.float {
    %0 = cf.access %n["l"] : (!cf.neuron) -> !cf.float
    %1 = cf.mul %c, %0 : (!cf.float, !cf.float) -> !cf.float
    cf.yield %1 : !cf.float
  }
  cf.func @replace(%n: !cf.neuron, %c: !cf.float) -> !cf.polyexp {
    %0 = cf.access %n["L"] : (!cf.neuron) -> !cf.polyexp
    %1 = cf.mul %c, %0 : (!cf.float, !cf.polyexp) -> !cf.polyexp
    cf.yield %1 : !cf.polyexp
  }
  cf.func @stop_at(%k: !cf.int, %n: !cf.neuron, %c: !cf.float) -> !cf.bool {
    %0 = cf.access %n["layer"] : (!cf.neuron) -> !cf.int
    %1 = cf.le %0, %k : (!cf.int, !cf.int) -> !cf.bool
    cf.yield %1 : !cf.bool
  }
  cf.func @first(%n: !cf.neuron) -> !cf.float {
    %0 = cf.access %n["u"] : (!cf.neuron) -> !cf.float
    cf.yield %0 : !cf.float
  }
  cf.func @higher(%a: !cf.float, %b: !cf.float) -> !cf.bool {
    %0 = cf.gt %a, %b : (!cf.float, !cf.float) -> !cf.bool
    cf.yield %0 : !cf.bool
  }
  cf.func @lists(%ns: !cf.list<!cf.neuron>, %e: !cf.polyexp, %n: !cf.neuron) -> !cf.polyexp {
    %0 = cf.access %ns["l"] : (!cf.list<!cf.neuron>) -> !cf.list<!cf.float>
    %1 = cf.dot %ns, %0 : (!cf.list<!cf.neuron>, !cf.list<!cf.float>) -> !cf.polyexp
    %2 = cf.sum %ns : (!cf.list<!cf.neuron>) -> !cf.polyexp
    %3 = cf.avg %0 : (!cf.list<!cf.float>) -> !cf.float
    %4 = cf.len %ns : (!cf.list<!cf.neuron>) -> !cf.int
    %5 = cf.argmax %0 : (!cf.list<!cf.float>) -> !cf.int
    %6 = cf.argmin %0 : (!cf.list<!cf.float>) -> !cf.int
    %7 = cf.max %0 : (!cf.list<!cf.float>) -> !cf.float
    %8 = cf.list %3, %4 : (!cf.float, !cf.int) -> !cf.list<!cf.float>
    %9 = cf.concat %0, %8 : (!cf.list<!cf.float>, !cf.list<!cf.float>) -> !cf.list<!cf.float>
    %f = cf.func_ref @first : !cf.func<(!cf.neuron) -> !cf.float>
    %10 = cf.map_list %ns, %f : (!cf.list<!cf.neuron>, !cf.func<(!cf.neuron) -> !cf.float>) -> !cf.list<!cf.float>
    %h = cf.func_ref @higher : !cf.func<(!cf.float, !cf.float) -> !cf.bool>
    %11 = cf.argmax %9, %h : (!cf.list<!cf.float>, !cf.func<(!cf.float, !cf.float) -> !cf.bool>) -> !cf.list<!cf.float>
    %g = cf.func_ref @coeff : !cf.func<(!cf.neuron, !cf.float) -> !cf.float>
    %12 = cf.map %1, %g : (!cf.polyexp, !cf.func<(!cf.neuron, !cf.float) -> !cf.float>) -> !cf.float
    %r = cf.func_ref @replace : !cf.func<(!cf.neuron, !cf.float) -> !cf.polyexp>
    %p = cf.func_ref @coeff : !cf.func<(!cf.neuron, !cf.float) -> !cf.float>
    %s = cf.call @stop_at(%4) : (!cf.int) -> !cf.func<(!cf.neuron, !cf.float) -> !cf.bool>
    %13 = cf.apply %s, %n, %3 : (!cf.func<(!cf.neuron, !cf.float) -> !cf.bool>, !cf.neuron, !cf.float) -> !cf.bool
    %14 = cf.traverse backward %e, %p, %s, %r : (!cf.polyexp, !cf.func<(!cf.neuron, !cf.float) -> !cf.float>, !cf.func<(!cf.neuron, !cf.float) -> !cf.bool>, !cf.func<(!cf.neuron, !cf.float) -> !cf.polyexp>) -> !cf.polyexp {
      %15 = cf.le %e, %n : (!cf.polyexp, !cf.neuron) -> !cf.ct
      cf.yield %15 : !cf.ct
    }
    %16 = cf.ge %e, %n : (!cf.polyexp, !cf.neuron) -> !cf.ct
    %17 = cf.lp maximize %14, %16 : (!cf.polyexp, !cf.ct) -> !cf.float
    %18 = cf.lp minimize %e, %16 : (!cf.polyexp, !cf.ct) -> !cf.float
    %19 = cf.call @scalar(%18) : (!cf.float) -> !cf.float
    cf.yield %14 : !cf.polyexp
  }
  cf.transformer @t {
    Affine(%curr: !cf.neuron, %curr_list: !cf.list<!cf.neuron>, %prev: !cf.list<!cf.neuron>) {
      %0 = cf.access %prev["l"] : (!cf.list<!cf.neuron>) -> !cf.list<!cf.float>
      %1 = cf.sum %0 : (!cf.list<!cf.float>) -> !cf.float
      %2 = cf.access %prev["Z"] : (!cf.list<!cf.neuron>) -> !cf.list<!cf.symexp>
      %3 = cf.access %curr["weight"] : (!cf.neuron) -> !cf.list<!cf.float>
      %4 = cf.dot %2, %3 : (!cf.list<!cf.symexp>, !cf.list<!cf.float>) -> !cf.symexp
      cf.return %1, %1, %curr, %4 : !cf.float, !cf.float, !cf.neuron, !cf.symexp
    }
    Neuron_add(%curr: !cf.neuron, %curr_list: !cf.list<!cf.neuron>, %prev: !cf.list<!cf.neuron>, %prev0: !cf.neuron, %prev1: !cf.neuron) {
      %0 = cf.access %prev0["l"] : (!cf.neuron) -> !cf.float
      %1 = cf.add %prev0, %prev1 : (!cf.neuron, !cf.neuron) -> !cf.polyexp
      %2 = cf.sym
      %3 = cf.tuple %0, %0, %1, %2 : (!cf.float, !cf.float, !cf.polyexp, !cf.noise) -> !cf.tuple<!cf.float, !cf.float, !cf.polyexp, !cf.noise>
      cf.return %3 : !cf.tuple<!cf.float, !cf.float, !cf.polyexp, !cf.noise>
    }
    rev_Relu(%curr: !cf.neuron, %curr_list: !cf.list<!cf.neuron>, %prev: !cf.neuron) {
      %0 = cf.const 0 : !cf.int
      %1 = cf.neg %curr : (!cf.neuron) -> !cf.polyexp
      cf.return %0, %0, %1, %0 : !cf.int, !cf.int, !cf.polyexp, !cf.int
    }
  }
  cf.flow backward @first, @stop_first, @t
  cf.func @stop_first(%n: !cf.neuron) -> !cf.bool {
    %0 = cf.const true : !cf.bool
    cf.yield %0 : !cf.bool
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   cf.shape (l : !cf.float, u : !cf.float, L : !cf.polyexp, Z : !cf.symexp) constraints(%curr: !cf.neuron) {
// CHECK:          cf.yield %1, %3 : !cf.ct, !cf.ct
// CHECK:        cf.func @consts() -> !cf.float {
// CHECK-NEXT:     %i = cf.const -3 : !cf.int
// CHECK-NEXT:     %f = cf.const -2.5 : !cf.float
// CHECK-NEXT:     %tiny = cf.const 1.0e-06 : !cf.float
// CHECK-NEXT:     %b = cf.const false : !cf.bool
// CHECK-NEXT:     %w = cf.const 7.0 : !cf.float
// CHECK-NEXT:     %s = cf.sym
// CHECK:          %13 = cf.select %12, %3, %i : (!cf.bool, !cf.float, !cf.int) -> !cf.float
// CHECK:        cf.func @lists(%ns: !cf.list<!cf.neuron>, %e: !cf.polyexp, %n: !cf.neuron) -> !cf.polyexp {
// CHECK:          %s = cf.call @stop_at(%4) : (!cf.int) -> !cf.func<(!cf.neuron, !cf.float) -> !cf.bool>
// CHECK-NEXT:     %13 = cf.apply %s, %n, %3 : (!cf.func<(!cf.neuron, !cf.float) -> !cf.bool>, !cf.neuron, !cf.float) -> !cf.bool
// CHECK-NEXT:     %14 = cf.traverse backward %e, %p, %s, %r : ({{.*}}) -> !cf.polyexp {
// CHECK-NEXT:       %15 = cf.le %e, %n : (!cf.polyexp, !cf.neuron) -> !cf.ct
// CHECK-NEXT:       cf.yield %15 : !cf.ct
// CHECK-NEXT:     }
// CHECK:          %17 = cf.lp maximize %14, %16 : (!cf.polyexp, !cf.ct) -> !cf.float
// CHECK:        cf.transformer @t {
// CHECK-NEXT:     Affine(%curr: !cf.neuron, %curr_list: !cf.list<!cf.neuron>, %prev: !cf.list<!cf.neuron>) {
// CHECK:            cf.return %1, %1, %curr, %4 : !cf.float, !cf.float, !cf.neuron, !cf.symexp
// CHECK-NEXT:     }
// CHECK-NEXT:     Neuron_add(%curr: !cf.neuron, %curr_list: !cf.list<!cf.neuron>, %prev: !cf.list<!cf.neuron>, %prev0: !cf.neuron, %prev1: !cf.neuron) {
// CHECK:            cf.return %3 : !cf.tuple<!cf.float, !cf.float, !cf.polyexp, !cf.noise>
// CHECK:          rev_Relu(%curr: !cf.neuron, %curr_list: !cf.list<!cf.neuron>, %prev: !cf.neuron) {
// CHECK:        cf.flow backward @first, @stop_first, @t
// CHECK-NEXT:   cf.func @stop_first(%n: !cf.neuron) -> !cf.bool {

// GENERIC: "cf.shape"() <{member_names = ["l", "u", "L", "Z"], member_types = [!cf.float, !cf.float, !cf.polyexp, !cf.symexp]}> ({
// GENERIC: "cf.transformer"() <{sym_name = "t", rules = ["Affine", "Neuron_add", "rev_Relu"]}> ({
// GENERIC: "cf.flow"() <{direction = "backward", priority = @first, stop = @stop_first, transformer = @t}> : () -> ()
