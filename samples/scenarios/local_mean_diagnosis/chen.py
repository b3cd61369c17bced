# same-as: ../../../tests/corpus/local_mean_diagnosis/wrong-summed-local-means.py
