"""cfmlir"""
