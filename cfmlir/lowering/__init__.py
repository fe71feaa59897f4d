"""cfmlir/lowering"""
