import tensorflow as tf


def build_model():
    model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(1)])
    model.compile(optimizer=tf.keras.optimizers.Adam(1e-3), loss="mse")
    return model


class Trainer:
    def fit(self, model, dataset, epochs=2):
        cb = [tf.keras.callbacks.ModelCheckpoint("ckpt.h5")]
        model.fit(dataset.batch(8), epochs=epochs, callbacks=cb)
        model.save("final.h5")
