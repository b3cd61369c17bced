# same-as: ../../../tests/corpus/collectives/blank-student.py
