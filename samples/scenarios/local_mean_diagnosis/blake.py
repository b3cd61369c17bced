# same-as: ../../../tests/corpus/local_mean_diagnosis/blank-student.py
