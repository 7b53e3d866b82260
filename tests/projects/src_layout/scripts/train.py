import numpy as np
import tensorflow as tf

import mypkg

if __name__ == "__main__":
    x = np.random.rand(64, 4).astype("float32")
    y = np.random.rand(64, 1).astype("float32")
    ds = tf.data.Dataset.from_tensor_slices((x, y))
    mypkg.Trainer().fit(mypkg.build_model(), ds)
