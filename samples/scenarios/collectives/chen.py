# same-as: ../../../tests/corpus/collectives/wrong-local-count.py
