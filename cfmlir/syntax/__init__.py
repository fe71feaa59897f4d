"""cfmlir/syntax"""
