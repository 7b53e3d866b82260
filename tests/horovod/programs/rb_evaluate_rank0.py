"""Read-back that only serves an evaluation (contract point 13, issue 37 item 2; the shape of
AkibDa/Deep-Learning's save_load.py): a Keras model trained and saved, loaded back, scored and
asked for predictions that are printed. Converted, rank 0 loads the file it wrote and evaluates
it, the other ranks skip both; before, every rank loaded it after a barrier, and on the second
host the file was not there (`verify --hosts 2`: "ranks finish" and "own disks" failed)."""
import numpy as np
import tensorflow as tf

x = np.random.RandomState(0).rand(256, 8).astype("float32")
y = (x.sum(axis=1) > 4).astype("int64")

model = tf.keras.Sequential([tf.keras.layers.Dense(8, activation="relu", input_shape=(8,)), tf.keras.layers.Dense(2)])
model.compile(optimizer=tf.keras.optimizers.Adam(0.01),
              loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
model.fit(x, y, epochs=2, batch_size=16)

model.save("rb_eval_model.h5")
restored = tf.keras.models.load_model("rb_eval_model.h5")
restored.evaluate(x, y, verbose=2)
loss, accuracy = restored.evaluate(x, y, verbose=0)
print(f"restored accuracy {accuracy:.3f}")
classes = np.argmax(restored.predict(x[:4], verbose=0), axis=1)
print("classes", classes)
