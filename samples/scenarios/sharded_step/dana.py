# same-as: ../../../tests/corpus/sharded_step/wrong-printed-numbers.py
