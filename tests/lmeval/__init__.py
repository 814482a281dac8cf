"""Real lm-evaluation-harness runs of a weightless model, for testing benchsel's readers.

``fake_lm`` (the ``benchsel-fake`` model and the local tasks) and ``run`` (the
CLI runner); ``FORMATS.md`` records what lm-eval 0.4.13 writes. Tests import
them as ``lmeval.fake_lm`` and ``lmeval.run`` (pytest puts ``tests/`` on
``sys.path``); ``fake_lm`` needs ``lm_eval`` installed, ``run`` does not.
"""
