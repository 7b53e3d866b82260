from mypkg.trainer import Trainer, build_model
