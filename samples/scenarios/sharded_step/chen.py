# same-as: ../../../tests/corpus/sharded_step/wrong-summed-local-means.py
