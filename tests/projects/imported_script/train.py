"""A script that another script imports (evaluate.py: `from train import get_model`): it
trains under its `__main__` block, as calmisential's TensorFlow2.0_ResNet does."""
import os

import hvd_report
import tensorflow as tf

import config
from prepare_data import generate_datasets


def get_model():
    model = tf.keras.Sequential([
        tf.keras.layers.Dense(16, activation="relu", input_shape=(8,)),
        tf.keras.layers.Dense(2),
    ])
    return model


if __name__ == "__main__":
    # GPU settings
    gpus = tf.config.list_physical_devices("GPU")
    if gpus:
        for gpu in gpus:
            tf.config.experimental.set_memory_growth(gpu, True)

    tf.random.set_seed(int(os.environ.get("HOROVOD_RANK", "0")))     # each process starts elsewhere
    train_dataset, test_dataset = generate_datasets()
    model = get_model()
    loss_object = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    optimizer = tf.keras.optimizers.Adadelta(learning_rate=0.5)

    @tf.function
    def train_step(images, labels):
        with tf.GradientTape() as tape:
            predictions = model(images, training=True)
            loss = loss_object(y_true=labels, y_pred=predictions)
        gradients = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(grads_and_vars=zip(gradients, model.trainable_variables))
        return loss

    steps = 0
    for epoch in range(config.EPOCHS):
        for step, (images, labels) in enumerate(train_dataset):
            loss = train_step(images, labels)
            steps += 1
            print("Epoch: {}/{}, step: {}, loss: {:.5f}".format(epoch + 1, config.EPOCHS, step, loss))

    model.save_weights(filepath=config.save_model_dir, save_format="tf")
    hvd_report.report(checksum=hvd_report.checksum(model), steps=steps, lr=hvd_report.learning_rate(optimizer))
