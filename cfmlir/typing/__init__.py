"""cfmlir/typing"""
