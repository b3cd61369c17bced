# same-as: ../../../tests/corpus/sharded_step/blank-student.py
