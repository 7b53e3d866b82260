"""A job resumed from the model its last run saved (geez0219/keras_application's LeNet5
load_checkpoint.py): ``load_model`` rebuilds the compiled optimizer from the file, a plain one,
and ``fit`` trains with it. Converted, the loaded model's optimizer is wrapped in
``hvd.DistributedOptimizer`` after the load; without it each rank trains on its own batches
and the weights drift apart after the first step's broadcast. The earlier run's file,
resume_model.h5, is made by the test in the working directory."""
import os

import hvd_report
import numpy as np
import tensorflow as tf

tf.random.set_seed(int(os.environ.get("HOROVOD_RANK", "0")))   # each rank shuffles its own way

x = np.random.RandomState(0).rand(256, 8).astype("float32")
y = x.sum(axis=1, keepdims=True)

model = tf.keras.models.load_model("resume_model.h5")
model.fit(x, y, batch_size=16, epochs=2, shuffle=True)
hvd_report.report(checksum=hvd_report.checksum(model), iterations=int(model.optimizer.iterations.numpy()),
                  lr=hvd_report.learning_rate(model.optimizer))
